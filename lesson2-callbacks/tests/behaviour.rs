shared::behaviour_suite!(shared::Lesson::Two, lesson2_callbacks::crawl);
