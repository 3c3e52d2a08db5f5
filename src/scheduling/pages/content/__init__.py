"""The content page (a content launch): the content, the form that schedules a change, and
its schedules."""
