//! Descriptors: a crawl never fails or stalls for want of file descriptors.
//!
//! - `slow_site_under_ulimit_64` and `demo_under_ulimit_64` run the
//!   `lesson3` program in a shell limited to 64 open files: the socket budget
//!   keeps it under the limit, and fetches wait their turn.
//! - `out_of_descriptors_waits_for_a_free_one` takes the budget's safety
//!   away: the test uses up nearly every descriptor of its own process, then
//!   crawls with a budget far above what is left, so that making a socket
//!   fails with "too many open files" (`EMFILE`) and the crawl must wait for
//!   one of its own sockets to close.
//!
//! The checks live in `shared::behaviour`; the server of the last one runs
//! in a child process (this test binary again, with only `server_process`).

use shared::{Config, Lesson};

#[test]
#[ignore = "not a test: the server process of out_of_descriptors_waits_for_a_free_one"]
fn server_process() {
    shared::behaviour::descriptor_server_process();
}

#[test]
fn out_of_descriptors_waits_for_a_free_one() {
    shared::behaviour::out_of_descriptors_waits_for_a_free_one(
        Lesson::Three,
        lesson3_generators::crawl_with_budget,
        "server_process",
        |_config: &mut Config| {},
    );
}

/// A fetch for every link at once, far more than a process allowed 64 open files can hold sockets for: the
/// crawl waits for descriptors, completes, and fails no URL.
#[test]
fn slow_site_under_ulimit_64() {
    shared::behaviour::slow_site_under_fd_limit(env!("CARGO_BIN_EXE_lesson3"), &[], 64);
}

/// `--demo` under the same limit: the demo server shares the process's
/// descriptors, and the crawl leaves it its half.
#[test]
fn demo_under_ulimit_64() {
    shared::behaviour::demo_under_fd_limit(env!("CARGO_BIN_EXE_lesson3"), &[], 64);
}
