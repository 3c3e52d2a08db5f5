"""Agent keys and proposals, on the content page and the manage view."""
