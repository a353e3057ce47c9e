// The suite's test width (see width.c): set before the test runner starts.
int sessionstorage_test_width_is_linked(void);
