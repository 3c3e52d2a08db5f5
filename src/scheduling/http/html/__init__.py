"""What every page shares: the layout and the schedule cards (`templates.py`, their view
models in `view_models.py`), the styles, and rendering a page model through its compiled
template (`render.py`, with the pages' time arithmetic). It only renders; the checks that read
the database are in `http/routing.py` and the pages."""
