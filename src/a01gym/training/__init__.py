"""Training and evaluation: rollouts, GRPO, held-out eval, baseline agents.

Top layer. Everything here reaches environments only through the OpenEnv client.
"""
