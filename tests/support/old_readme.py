"""The headings of the README before it was split into the docs site (issue 29), as they read
there: every one has a home in the site (tests/test_docs_site.py finds each as a heading of a
page in the nav), so nothing the README said was lost in the move."""

OLD_README_HEADINGS = (
    "Scheduling — a Dee Wan plugin on Cloudflare Python Workers",
    "Two commands",
    "Walkthrough",
    "Routes",
    "Schedule semantics",
    "Notifications",
    "Time",
    "Runner",
    "Platform limits met at run time",
    "Operator status",
    "The tick history",
    "Health: `GET /healthz`",
    "Metrics: `GET /admin/metrics`",
    "Alerting",
    "The operator page: `GET /admin`",
    "Data, retention, uninstall",
    "Security notes",
    "Configuration",
    "Deploying to Cloudflare",
    "Local development against a real local Dee Wan",
    "Tests",
    "Benchmarks",
    "Layout",
)
