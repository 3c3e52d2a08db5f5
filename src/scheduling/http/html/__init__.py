"""What every page shares: the layout, the schedule cards, the styles, time labels, charts,
and rendering a page model through its compiled template. It only renders; the checks that
read the database are in `http/guards.py` and the pages' rooms (`pages/`)."""
