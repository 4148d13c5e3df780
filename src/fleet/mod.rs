//! Many gateways at once (issue 15): the fleet plan reads the cluster (or a file) once
//! and plans every selected gateway with `core::fleet`; the CLI only parses and renders.

pub mod plan;
pub mod schedule;
pub mod wave;
