"""Generation settings (max output tokens, temperature) and fitting a call to the window.

The catalog gives each model a default cap and temperature; ``[model]`` overrides them
for every role and ``[model.per_role.ROLE]`` for one. A cap larger than a small local
window would leave no room for the prompt, so a catalog default is lowered to a quarter
of the window; a cap set by the user is kept up to half of it. Before a request goes out
its prompt is measured: the cap shrinks to what is left, and a prompt that leaves no
useful room is refused here, with the fix, instead of by the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from selfforge.models.base import ContextTooLong, Request
from selfforge.models.tokens import estimate_tokens

# Replies shorter than this cannot hold an edit; below it the call is not worth making.
MIN_OUTPUT_TOKENS = 128


def margin_tokens(window: int) -> int:
    """Room kept free for the chat template, the system prompt and estimate error."""
    return max(64, window // 16)


@dataclass(frozen=True)
class RoleSettings:
    max_output_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class Generation:
    """What the user set in ``[model]``; None everywhere means the catalog's defaults."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    per_role: dict[str, RoleSettings] = field(default_factory=dict)

    def user_cap(self, role: str) -> int | None:
        own = self.per_role.get(role)
        return (own.max_output_tokens if own else None) or self.max_output_tokens

    def user_temperature(self, role: str) -> float | None:
        own = self.per_role.get(role)
        if own is not None and own.temperature is not None:
            return own.temperature
        return self.temperature


def output_cap(generation: Generation, role: str, catalog_cap: int, window: int) -> int:
    """The max output tokens a role's calls ask for, given the window in force."""
    user = generation.user_cap(role)
    if user is not None:
        return max(1, min(user, window // 2))
    return max(1, min(catalog_cap, window // 4))


def fit_request(request: Request, window: int, label: str, scale: float = 1.0) -> Request:
    """The request with its cap lowered so prompt + output fit ``window``; or ContextTooLong.
    ``scale``: how much more the server counted than the estimate said, once it refused."""
    prompt = int(scale * sum(estimate_tokens(m.content) for m in request.messages))
    room = window - margin_tokens(window) - prompt
    cap = request.max_output_tokens or room
    if room >= cap:
        return request
    if room >= min(MIN_OUTPUT_TOKENS, cap):
        return replace(request, max_output_tokens=room)
    need = prompt + margin_tokens(window) + min(MIN_OUTPUT_TOKENS, cap)
    raise ContextTooLong(
        f"{label}: the {request.role} prompt needs about {need} tokens but the model's "
        f"window is {window}; raise the server's context (llama.cpp -c {suggest(need)}, "
        f"vLLM --max-model-len {suggest(need)}, Ollama num_ctx) or use a larger model"
    )


def suggest(need: int) -> int:
    """The next power of two at or above ``need``: the usual context sizes."""
    size = 2048
    while size < need:
        size *= 2
    return size
