shared::behaviour_suite!(shared::Lesson::Three, lesson3_generators::crawl);
