"""Fine-tuning the math embedding (``train embed``).

Modules: ``training_pairs`` (no-LLM pairs), ``question_generator`` (LLM questions), the thesis's split
(``rag_app.datasets.paper_split``), ``hard_negatives``, ``embedding_trainer`` and ``train_embedding`` (the job).
"""
