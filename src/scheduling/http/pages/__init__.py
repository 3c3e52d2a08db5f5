"""The management pages: templates, view models, wording and time labels. They only render;
the checks that read the database are in `http/guards.py` and `http/handlers/`."""
