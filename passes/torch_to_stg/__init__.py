"""convert-torch-to-stg's pieces: the walk (convert.py), the aten op patterns
(patterns.py), model symbol inference (symbols.py) and the layer-stack folding
(layers.py). The pass itself is passes/convert_torch_to_stg.py."""
