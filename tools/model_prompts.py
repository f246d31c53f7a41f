"""The committed prompts for the real-model golden tests (imported by model_fixtures.py).

Written for this project; the two long ones are ~1,000 tokens each so that
attention over long ranges (and Gemma 3's 512-token sliding window) is exercised.
"""

LONG_STORY = " ".join([
    "The lighthouse keeper of Caldera Point kept a ledger of every ship that passed, every storm that broke, and every",
    "letter that arrived by the supply boat on the first Monday of the month. In the spring of the year the harbour froze,",
    "she wrote that the gulls had gone quiet for three days before the ice came, and that the old fishermen had read the",
    "silence as a warning long before the barometer fell. Her ledger ran to eleven volumes by then, bound in oilcloth and",
    "stacked on the shelf above the stove where the damp could not reach them. Visitors sometimes asked why she bothered,",
    "since the coast guard kept its own records now, with radar and satellites and automated buoys that reported the swell",
    "every ten minutes. She would point to the margins, where she had noted the colour of the water, the smell of the wind,",
    "the way the fog rolled in from the south-west in long grey fingers before it swallowed the headland. No machine wrote",
    "those things down, she said, and one day someone would want to know. ",
]) * 6

LONG_TECHNICAL = " ".join([
    "A memory-mapped file lets a program treat the contents of a file as if they were an array in memory. The operating",
    "system reserves a range of virtual addresses and fills the pages lazily: the first access to a page triggers a page",
    "fault, the kernel reads the corresponding block from disk into the page cache, and the process continues as though",
    "the data had always been there. For read-only data such as model weights this has three useful consequences. First,",
    "loading is nearly instantaneous, because nothing is read until it is needed. Second, several processes that map the",
    "same file share the same physical pages, so running two copies of a server does not double the memory used by the",
    "weights. Third, the kernel may evict clean pages under memory pressure and read them back later, which means the",
    "resident set can shrink without the program doing anything. The costs are less obvious. Page faults on the first pass",
    "make the first token slower than later ones unless the pages are touched in advance; random access patterns defeat",
    "the kernel's read-ahead; and on some file systems large pages are not available, so the translation lookaside buffer",
    "fills quickly when a matrix multiplication sweeps through gigabytes of weights. ",
]) * 5

PROMPTS = [
    {"name": "hello", "text": "Hello"},
    {"name": "question", "text": "What is the capital of France? Answer in one word."},
    {"name": "chatml_turn", "text": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                                    "Give me three tips for writing clear code.<|im_end|>\n<|im_start|>assistant\n"},
    {"name": "gemma_turn", "text": "<start_of_turn>user\nWrite a haiku about autumn leaves.<end_of_turn>\n"
                                   "<start_of_turn>model\n"},
    {"name": "code", "text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    if n < 2:\n"
                             "        return n\n    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n"
                             "    return b\n\n\ndef is_prime(n):\n"},
    {"name": "list", "text": "Shopping list:\n1. eggs\n2. flour\n3. butter\n4."},
    {"name": "numbers", "text": "The first twenty powers of two are 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,"},
    {"name": "multilingual", "text": "English: good morning. Français : bonjour. Deutsch: guten Morgen. Español: buenos "
                                     "días. 日本語：おはようございます。中文："},
    {"name": "json", "text": "{\"name\": \"kiln\", \"language\": \"C++\", \"features\": [\"gguf\", \"tokenizer\","},
    {"name": "whitespace", "text": "Column A    Column B\n\t- item\n\n\n   indented line\n"},
    {"name": "long_story", "text": LONG_STORY},
    {"name": "long_technical", "text": LONG_TECHNICAL},
]

# Prompts whose greedy continuation is compared token for token.
GREEDY = ["question", "chatml_turn", "gemma_turn", "code", "list", "long_story"]
