//! Descriptors: a crawl never fails or stalls for want of file descriptors.
//! Each test runs the `lesson1` program under `ulimit -n`; see
//! `shared::behaviour`.

/// A hundred threads, more than a process allowed 64 open files can hold sockets for: the crawl
/// waits for descriptors, completes, and fails no URL.
#[test]
fn slow_site_under_ulimit_64() {
    shared::behaviour::slow_site_under_fd_limit(
        env!("CARGO_BIN_EXE_lesson1"),
        &["--threads", "100"],
        64,
    );
}

/// `--demo` under the same limit: the demo server shares the process's
/// descriptors, and the crawl leaves it its half.
#[test]
fn demo_under_ulimit_64() {
    shared::behaviour::demo_under_fd_limit(
        env!("CARGO_BIN_EXE_lesson1"),
        &["--threads", "100"],
        64,
    );
}
