//! status-sim's integration tests, in one binary: the command line, the fleet scenario, the
//! laws every run keeps, the primitives, the routing study.

mod cli;
mod fleet;
mod laws;
mod primitives;
mod study;
