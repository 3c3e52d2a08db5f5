"""The Python side of the repository's commands (`scripts/dev` runs `python -m scripts.dev`)."""
