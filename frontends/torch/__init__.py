"""The torch frontend: an ordinary torch.nn.Module -> torch.export -> torch-mlir's FX
importer -> the torch dialect in xDSL (`import_module`), and convert-torch-to-stg
makes it a forward program as docs/training-ir.md describes (`import_forward`).
docs/torch-frontend.md tells the whole story."""

from stagec.frontends.torch.importer import export, import_exported, import_module

__all__ = ["export", "import_exported", "import_module"]
