"""SQL over the D1-shaped database port. The only place that knows table and column names."""
