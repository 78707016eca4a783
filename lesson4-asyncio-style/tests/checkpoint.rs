//! The chapter's checkpoint: `cargo run --release -p lesson4-asyncio-style -- --demo -q`
//! ends its report as `docs/src/generated/checkpoints/lesson4.txt` shows.

#[test]
fn the_demo_crawl_ends_as_the_chapter_shows() {
    shared::behaviour::checkpoint(shared::Lesson::Four, lesson4_asyncio_style::crawl);
}
