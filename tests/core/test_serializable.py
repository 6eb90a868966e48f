"""``Serializable`` (Composer's ``composer.core.serializable``): the base of State, Algorithm and Callback, with
nothing to save by default."""

from helpers import tiny_model

from raycomp.core import Algorithm, Callback, Serializable, State


class Counting(Algorithm):
    def __init__(self) -> None:
        self.count = 0

    def match(self, event, state):
        return False

    def apply(self, event, state, logger):
        return None


def test_state_algorithms_and_callbacks_are_serializable():
    state = State(tiny_model(), "1ep", algorithms=[Counting()], callbacks=[Callback()])
    assert all(isinstance(obj, Serializable) for obj in (state, state.algorithms[0], state.callbacks[0]))


def test_by_default_there_is_nothing_to_save_or_restore():
    algorithm, callback = Counting(), Callback()
    assert algorithm.state_dict() == {} and callback.state_dict() == {}
    algorithm.load_state_dict({})
    callback.load_state_dict({})
    assert algorithm.count == 0
