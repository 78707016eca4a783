//! Descriptors: a crawl never fails or stalls for want of file descriptors.
//!
//! - `slow_site_under_ulimit_64` and `demo_under_ulimit_64` run the
//!   `lesson1` program with `--threads 100` in a shell limited to 64 open files: the
//!   socket budget keeps it under the limit, and fetches wait their turn.
//! - `out_of_descriptors_waits_for_a_free_one` takes the budget's safety
//!   away: the test uses up nearly every descriptor of its own process, then
//!   crawls with a budget far above what is left, so that making a socket
//!   fails with "too many open files" (`EMFILE`) and the crawl must wait for
//!   one of its own sockets to close.
//!
//! The checks live in `shared::behaviour`.

shared::descriptor_suite!(
    shared::Lesson::One,
    lesson1_threadpool::crawl_with_budget,
    env!("CARGO_BIN_EXE_lesson1"),
    ["--threads", "100"]
);
