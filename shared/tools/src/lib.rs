//! What the course's tools share: how a trace is drawn ([`timeline`]), the
//! book's diff pages and transcripts, its `{{#include}}` helpers
//! ([`includes`]) and which of its listings building mode folds
//! ([`building`]). Where the checkout is comes from the learner's tool,
//! `starter`, which needs it too.

pub mod building;
pub mod how;
pub mod includes;
pub mod lesson_diff;
pub mod testdir;
pub mod timeline;
pub mod transcripts;

pub use starter::workspace_root;
