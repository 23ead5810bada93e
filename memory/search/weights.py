"""The learned fusion's weights (memory.search.ranking), written by `bench/fusion.py fit --write`: a pairwise
logistic ranker fitted on LoCoMo conversations 1–5 and the product set's training users, scaled so that
the sigmoid of the sum reads as the chance that a candidate is the right record."""
HYBRID = {'bias': -6.2418, 'text': 0.3312, 'text_best': 1.1429, 'closeness': 1.7069, 'closeness_gap': 0.0, 'unembedded': 0.0, 'in_window': 0.6503, 'recency': -0.0778, 'entities': 0.1217, 'type_named': 0.3983, 'length': 1.0842, 'neighbour_text': 0.357, 'neighbour_closeness': 0.095}
FULL_TEXT = {'bias': -7.1327, 'text': 2.1028, 'text_best': 3.6704, 'closeness': 0.0, 'closeness_gap': 0.0, 'unembedded': 0.0, 'in_window': 1.6556, 'recency': -0.0699, 'entities': 1.275, 'type_named': 1.1009, 'length': -0.5495, 'neighbour_text': 0.6921, 'neighbour_closeness': 0.0}
