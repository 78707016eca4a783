//! The chapter's checkpoint: `cargo run --release -p lesson2-callbacks -- --demo -q`
//! ends its report as `docs/src/generated/checkpoints/lesson2.txt` shows.

#[test]
fn the_demo_crawl_ends_as_the_chapter_shows() {
    shared::behaviour::checkpoint(shared::Lesson::Two, lesson2_callbacks::crawl);
}
