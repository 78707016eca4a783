//! # The behaviour suite (being built)
