"""The calendar: an installation's waiting changes by day, and a person's calendar feed."""
