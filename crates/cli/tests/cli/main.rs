//! The `llmscope` binary as a user runs it — child processes against the simulator, fake
//! servers and a real Prometheus — in one test binary (one link, shared helpers).
#![allow(clippy::print_stderr)] // a skipped test says why, outside CI

#[path = "../balancer/mod.rs"]
mod balancer;
mod common;

mod capacity;
mod check;
mod connect;
mod deploy;
mod fleet;
mod generate;
mod generated_lint;
mod haproxy;
mod hostile;
mod hostile_server;
mod interrupted;
mod load;
mod refuse;
mod run;
mod shard;
mod soak;
mod watch;
mod whatif;
