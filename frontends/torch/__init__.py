"""The torch frontend: an ordinary torch.nn.Module -> torch.export -> torch-mlir's FX
importer -> the torch dialect in xDSL (`import_module`); convert-torch-to-stg makes it
the forward program docs/training-ir.md describes (`import_forward`), and
`build_torch_model` does both for Hugging Face model classes or a MODULE:FACTORY.
docs/torch-frontend.md tells the whole story."""

from stagec.frontends.torch.importer import export, import_exported, import_module
from stagec.frontends.torch.models import build_torch_model, import_forward

__all__ = ["build_torch_model", "export", "import_exported", "import_forward", "import_module"]
