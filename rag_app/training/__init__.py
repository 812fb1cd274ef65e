"""Fine-tuning the math embedding (``train embed``).

Modules: ``training_pairs`` (no-LLM pairs), ``question_generator`` (LLM questions), ``paper_split``
(the thesis's split), ``hard_negatives``, ``embedding_trainer`` and ``train_embedding`` (the job).
"""
