//! The Grafana dashboard for a stack.
