from raycomp.core import Event


def test_values_are_lowercase_names():
    for event in Event:
        assert event.value == event.name.lower()


def test_before_and_after_follow_one_naming_rule():
    before = {e for e in Event if e.is_before_event}
    after = {e for e in Event if e.is_after_event}
    assert before.isdisjoint(after)
    # every before_ event has its after_ counterpart, and the other way round
    assert {Event(e.value.replace("before", "after")) for e in before} == after
    assert Event.AFTER_DATALOADER in after and Event.BEFORE_TRAIN_BATCH in before
    # As Composer's: only names beginning with before_/after_, not the evaluation loop's EVAL_BEFORE_/EVAL_AFTER_
    assert not {Event.EVAL_AFTER_FORWARD, Event.EVAL_AFTER_ALL} & after and Event.EVAL_BEFORE_ALL not in before


def test_start_and_end_events_are_neither_before_nor_after():
    for event in Event:
        if event.value.endswith(("_start", "_end")):
            assert not event.is_before_event and not event.is_after_event, event
    assert not Event.INIT.is_before_event and not Event.BATCH_CHECKPOINT.is_after_event


def test_all_events_of_the_issue_exist():
    names = [
        "INIT",
        "BEFORE_LOAD",
        "AFTER_LOAD",
        "FIT_START",
        "EPOCH_START",
        "BEFORE_DATALOADER",
        "AFTER_DATALOADER",
        "BATCH_START",
        "BEFORE_TRAIN_BATCH",
        "BEFORE_FORWARD",
        "AFTER_FORWARD",
        "BEFORE_LOSS",
        "AFTER_LOSS",
        "BEFORE_BACKWARD",
        "AFTER_BACKWARD",
        "AFTER_TRAIN_BATCH",
        "BATCH_END",
        "BATCH_CHECKPOINT",
        "EPOCH_END",
        "EPOCH_CHECKPOINT",
        "FIT_END",
        "EVAL_BEFORE_ALL",
        "EVAL_START",
        "EVAL_BATCH_START",
        "EVAL_BEFORE_FORWARD",
        "EVAL_AFTER_FORWARD",
        "EVAL_BATCH_END",
        "EVAL_END",
        "EVAL_AFTER_ALL",
    ]
    assert [e.name for e in Event] == names
