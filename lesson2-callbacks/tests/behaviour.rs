shared::behaviour_suite!(shared::Lesson::Two, lesson2_callbacks::crawl);

/// The exit status, as the program sets it: 0 when a server answered (even
/// brokenly), 1 with a hint when nothing did.
#[test]
fn exit_status_follows_status_lines() {
    shared::behaviour::exit_status_follows_status_lines(env!("CARGO_BIN_EXE_lesson2"), &[]);
}
