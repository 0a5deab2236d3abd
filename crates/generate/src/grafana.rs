//! Grafana model.
