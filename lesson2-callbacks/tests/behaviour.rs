shared::behaviour_suite!(shared::Lesson::Two, lesson2_callbacks::crawl);

/// The exit status, as the program sets it: 0 when a server answered (even
/// brokenly), 1 with a hint when nothing did.
#[test]
fn exit_status_follows_status_lines() {
    shared::behaviour::exit_status_follows_status_lines(env!("CARGO_BIN_EXE_lesson2"), &[]);
}

/// On a terminal the live status line replaces the per-URL lines; piped,
/// the lines stay.
#[test]
fn status_line_on_a_terminal() {
    shared::behaviour::status_line_on_a_terminal(env!("CARGO_BIN_EXE_lesson2"));
}

/// With debug lines shown (`-v`), each link of a page gets a line saying
/// whether this page queued it or it was already seen (`log_queued`).
#[test]
fn debug_lines_say_which_links_were_queued_and_which_were_already_seen() {
    use shared::behaviour::{config_for, crawl_within_deadline};
    use shared::fixtures::server::{Site, TestServer};
    let server = TestServer::start(
        Site::new()
            .page("/", r#"<a href="/a">a</a>"#)
            .page("/a", r#"<a href="/">home</a>"#),
    );
    // `config_for` shows debug lines and captures them.
    let config = config_for(shared::Lesson::Two, &server, "/");
    crawl_within_deadline(lesson2_callbacks::crawl, &config);
    let (root, a) = (server.url("/"), server.url("/a"));
    let lines = config.log.lines();
    for (expected, what) in [
        (
            format!("queue {a} from {root}"),
            "/a, new when / links to it",
        ),
        (
            format!("skip {root} from {a}: already seen"),
            "/, a root, seen from the start when /a links back to it",
        ),
    ] {
        assert!(
            lines.contains(&expected),
            "no debug line `{expected}` ({what}): with debug lines shown, `log_queued` \
             writes one line per link of a page; lines were: {lines:#?}"
        );
    }
}
