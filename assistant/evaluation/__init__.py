"""The evaluation harness: question sets run under configurations, metrics, and the reports written from them."""
