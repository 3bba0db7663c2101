//! ringperf-engine: the data plane of one side of a test, on io_uring (and the classic
//! syscall loops). It moves bytes and measures them with `ringperf-core`'s instruments; it
//! never prints and knows nothing of the control plane. The CLI renders the
//! [`ringperf_core::report::TestReport`] the control plane builds from it.

pub mod buf;
pub mod classic;
pub mod io;
pub mod net;
pub mod probe;
pub mod ring;
pub mod side;
pub mod verify;
pub mod window;
pub mod worker;
pub mod workload;
