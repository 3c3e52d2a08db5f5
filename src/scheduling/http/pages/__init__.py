"""The management pages: templates, wording and the request guards they share."""
