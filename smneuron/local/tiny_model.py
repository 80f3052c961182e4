"""A tiny BERT (random weights, small vocabulary, real ``tokenizer.json``) for the demo and tests.

It is saved with ``save_pretrained`` exactly like a Hugging Face model, so every step of smneuron runs
on it as on a real model, in a second, with nothing downloaded.
"""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the a an is was are were be been good bad great terrible awful fine movie film book story "
    "i you he she it we they love loved hate hated like liked this that these those and or but not no "
    "very really so too what where who when how why which paris france capital of city river seine "
    "john mary london works work at google in on for with from to by about is named lives live "
    "new york berlin germany amazon company founded year today tomorrow weather sunny rainy"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SUFFIXES = ["##s", "##ed", "##ing", "##ly", "##er"]
PUNCT = [".", ",", "?", "!", "'", "-"]

LABELS = {
    "text-classification": ["NEGATIVE", "POSITIVE"],
    "token-classification": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"],
}


def build_tiny_bert(out_dir: str | Path, task: str = "text-classification", *, seed: int = 0) -> Path:
    """Save a tiny random BERT for ``task`` (and its tokenizer) into ``out_dir``.

    Args:
        out_dir: directory to write (created).
        task: text-classification, feature-extraction, token-classification or question-answering.
        seed: torch seed for the random weights.

    Returns:
        ``out_dir`` as a Path.
    """
    import torch
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokens = list(dict.fromkeys(SPECIAL + WORDS + SUFFIXES + PUNCT))  # unique, in order
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=256,
    )
    transformers.utils.logging.disable_progress_bar()  # no shard-writing bars in notebooks and logs
    fast.save_pretrained(out)

    labels = LABELS.get(task)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=256,
        type_vocab_size=2,
        **(
            {"id2label": dict(enumerate(labels)), "label2id": {name: i for i, name in enumerate(labels)}}
            if labels
            else {}
        ),
    )
    cls = {
        "text-classification": transformers.BertForSequenceClassification,
        "feature-extraction": transformers.BertModel,
        "token-classification": transformers.BertForTokenClassification,
        "question-answering": transformers.BertForQuestionAnswering,
    }[task]
    torch.manual_seed(seed)
    model = cls(config).eval()
    model.save_pretrained(out)
    return out


CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tiny_llama(out_dir: str | Path, *, seed: int = 0) -> Path:
    """Save a tiny random LlamaForCausalLM (head size 64, grouped K/V heads) with a word-level tokenizer
    and a chat template: the text-generation path runs on it in seconds, nothing downloaded."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    special = ["<unk>", "<s>", "</s>", "<pad>"]
    tokens = list(dict.fromkeys(special + WORDS + PUNCT + ["user", "assistant", "system", ":"]))
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=512,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=512,
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        pad_token_id=vocab["<pad>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    transformers.utils.logging.disable_progress_bar()
    transformers.LlamaForCausalLM(config).eval().save_pretrained(out)
    return out
