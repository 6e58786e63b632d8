"""stagec's command-line tools: stagec-opt and the stagec CLI."""
