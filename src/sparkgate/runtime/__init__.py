"""What a statement handler is given and returns, and the pieces every engine capability
builds on: the execution contract and its lifecycle hooks (contract, hooks), the session an
engine hosts (session), error records (failures) and Arrow results (collect).

The bottom layer: the engine (engine/) and its capabilities (tables/, streaming/) import it;
it imports none of them at run time."""
