"""The circuit breaker of a model served elsewhere (issue 27 item 4)."""
from core_memory.llm.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_it_opens_after_the_failures_in_a_row_and_lets_one_trial_through_after_its_time():
    clock = Clock()
    breaker = CircuitBreaker(failures=3, seconds=30, clock=clock)

    for _ in range(2):
        breaker.failed()
    assert (breaker.state, breaker.allow()) == (CLOSED, True)
    breaker.failed()
    assert (breaker.state, breaker.allow(), breaker.seconds_open()) == (OPEN, False, 30)

    clock.now += 30
    assert breaker.state == HALF_OPEN
    assert breaker.allow() is True
    assert breaker.allow() is False  # one trial at a time


def test_a_success_in_between_starts_the_count_again():
    breaker = CircuitBreaker(failures=2, seconds=30, clock=Clock())

    breaker.failed()
    breaker.succeeded()
    breaker.failed()

    assert breaker.state == CLOSED


def test_a_failed_trial_opens_it_again_and_a_good_one_closes_it():
    clock = Clock()
    breaker = CircuitBreaker(failures=1, seconds=10, clock=clock)
    breaker.failed()
    clock.now += 10

    assert breaker.allow()
    breaker.failed()
    assert (breaker.state, breaker.seconds_open()) == (OPEN, 10)

    clock.now += 10
    assert breaker.allow()
    breaker.succeeded()
    assert (breaker.state, breaker.allow()) == (CLOSED, True)
