"""The collective communication matcher (stage.md §IV-D2), shared by the passes that
turn layout changes into collectives."""
