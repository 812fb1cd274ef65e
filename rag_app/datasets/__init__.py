"""What training and evaluation both read, below both (neither imports the other).

``query_set`` (versioned query-set files: evaluation scores them, training keeps their queries out of
its pairs), ``paper_split`` (which papers and statements a model trained on: training makes pairs of
the training side, evaluation reports seen and unseen papers apart) and ``statement_names`` (the query
shapes made of statement names and labels, and the label words reserved for evaluation).
"""
