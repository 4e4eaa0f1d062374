"""The run's spending limits, checked before each model call and fed after it."""

from __future__ import annotations

import threading

from selfforge.errors import BudgetExceeded
from selfforge.models.base import Reply, Request


class Budget:
    """Limits in USD and tokens (None = unlimited); starts from amounts already spent
    when a run resumes."""

    def __init__(
        self,
        usd: float | None = None,
        tokens: int | None = None,
        *,
        spent_usd: float = 0.0,
        spent_tokens: int = 0,
    ) -> None:
        self.usd = usd
        self.tokens = tokens
        self.spent_usd = spent_usd
        self.spent_tokens = spent_tokens
        self.unpriced_calls = 0  # calls whose cost was unknown, so not in spent_usd
        self._lock = threading.Lock()

    def check(
        self,
        request: Request,
        estimated_input_tokens: int,
        estimated_cost_usd: float | None = None,
    ) -> None:
        """Raise BudgetExceeded if the call about to be made would pass a limit."""
        with self._lock:
            if self.tokens is not None:
                needed = estimated_input_tokens + (request.max_output_tokens or 0)
                if self.spent_tokens + needed > self.tokens:
                    raise BudgetExceeded(
                        f"the run's token budget ({self.tokens:,}) would be exceeded: "
                        f"{self.spent_tokens:,} spent, the next {request.role} call needs about "
                        f"{needed:,}; raise limits.budget_tokens in selfforge.toml"
                    )
            if self.usd is not None:
                if estimated_cost_usd is None:
                    estimated_cost_usd = self._projected_cost(request, estimated_input_tokens)
                projected = self.spent_usd + estimated_cost_usd
                # A $0 budget still lets free (local) models run.
                if projected > self.usd or 0 < self.usd <= self.spent_usd:
                    raise BudgetExceeded(
                        f"the run's budget of ${self.usd:.2f} would be exceeded: "
                        f"${self.spent_usd:.4f} spent, the next {request.role} call costs about "
                        f"${estimated_cost_usd:.4f}; raise limits.budget_usd in "
                        "selfforge.toml"
                    )

    def _projected_cost(self, request: Request, input_tokens: int) -> float:
        """Without a price for the next call, assume the run's average price per token."""
        if self.spent_tokens == 0:
            return 0.0
        tokens = input_tokens + (request.max_output_tokens or 0)
        return self.spent_usd / self.spent_tokens * tokens

    def record(self, reply: Reply) -> None:
        with self._lock:
            self.spent_tokens += reply.usage.total
            if reply.cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.spent_usd += reply.cost_usd

    def __repr__(self) -> str:
        return (
            f"Budget(usd={self.usd}, tokens={self.tokens}, spent_usd={self.spent_usd:.4f}, "
            f"spent_tokens={self.spent_tokens})"
        )
