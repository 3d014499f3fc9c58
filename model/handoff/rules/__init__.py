"""The handoff's events as module-level rules, one file per event or small family, named
as the engine's ``refimpl/rules/`` names them: the two can be read side by side.

Each rule is ``rule(sw, s, r, ...)``: the variant's switches, the DSL context, the
event's parameters; a prefill step also takes ``death`` (the protocol has ``crash``).
``model/handoff/protocol.py`` binds the switches and lists the rules in
``spec/events.py``'s order. ``guards.py`` holds what several rules ask of a request.
"""
