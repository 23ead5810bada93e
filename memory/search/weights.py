"""The learned fusion's weights (memory.search.ranking, .rerank), written by `bench/fusion.py fit --write`:
pairwise logistic rankers fitted on LoCoMo conversations 1–5 and the product set's training users, scaled so
that the sigmoid of the sum reads as the chance that a candidate is the right record. The first ranking of a
store of facts, of a conversation index and of full text alone; the second look (RERANK_*; empty: none) at
the first's best few."""
HYBRID = {'bias': -6.2551, 'text': 0.2189, 'text_best': 1.2042, 'closeness': 1.7523, 'closeness_gap': 0.0, 'unembedded': 0.0, 'in_window': 0.6057, 'recency': -0.0779, 'entities': 0.3035, 'type_named': 0.4241, 'length': 0.9642, 'neighbour_text': 0.3269, 'neighbour_closeness': 0.0974}
RERANK_HYBRID = {'coverage': 0.5789, 'pairs': -0.0789, 'time_told': 0.5241, 'number_told': 0.0049, 'text_rank': -0.1788, 'vector_rank': 0.2161}
HYBRID_CONVERSATION = {'bias': -6.2719, 'text': 0.4518, 'text_best': 0.8893, 'closeness': 1.7194, 'closeness_gap': 0.0, 'unembedded': 0.0, 'in_window': 0.6592, 'recency': -0.0656, 'entities': 0.137, 'type_named': 0.4152, 'length': 1.0798, 'neighbour_text': 0.3576, 'neighbour_closeness': 0.1035}
RERANK_CONVERSATION = {'coverage': 0.5816, 'pairs': -0.0744, 'time_told': 0.5139, 'number_told': 0.1672, 'text_rank': -0.11, 'vector_rank': 0.2104}
FULL_TEXT = {'bias': -7.1327, 'text': 2.1028, 'text_best': 3.6704, 'closeness': 0.0, 'closeness_gap': 0.0, 'unembedded': 0.0, 'in_window': 1.6556, 'recency': -0.0699, 'entities': 1.275, 'type_named': 1.1009, 'length': -0.5495, 'neighbour_text': 0.6921, 'neighbour_closeness': 0.0}
RERANK_FULL_TEXT = {'coverage': 1.8151, 'pairs': -0.2752, 'time_told': 1.3098, 'number_told': 1.4292, 'text_rank': -0.5046, 'vector_rank': 0.0}
