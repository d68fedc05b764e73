"""Pure text rules: words and names, sentences, markup, labels, what a question asks and which topics it names."""
