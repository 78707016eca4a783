//! The chapter's checkpoint: `cargo run --release -p lesson3-generators -- --demo -q`
//! ends its report as `docs/src/generated/checkpoints/lesson3.txt` shows.

#[test]
fn the_demo_crawl_ends_as_the_chapter_shows() {
    shared::behaviour::checkpoint(shared::Lesson::Three, lesson3_generators::crawl);
}
