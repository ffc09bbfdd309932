"""A parallel corpus English → French and English → Russian, generated from a small grammar.

Real corpora are too big to train on a laptop in a lecture; a grammar gives sentences that are
simple in vocabulary but not in structure, so that a translation model has to *look back* at
the right source word:

* **agreement** — French articles, adjectives and past participles agree with the gender and
  number of their noun (``la petite souris noire s'est assise``); Russian adjectives, verbs in
  the past tense and the relative pronoun ``который`` agree in gender and number, and nouns and
  adjectives take the case their verb or preposition asks for (``сел на коврик`` — accusative,
  where to; ``спал на коврике`` — prepositional, where);
* **word order** — French puts colour adjectives after the noun (``le grand chat noir``);
* **long sentences** — relative clauses (``the cat that saw the dog``) and two clauses joined by
  *because / and / but* give sentences from 3 to 30 words.

A sentence is first sampled as a small tree (:class:`Sentence` of :class:`Clause`, :class:`NP`,
:class:`VP`), then *realised* in each language by :func:`realize`, so the English, French and
Russian sides always mean the same thing. Tokens are lowercase words separated by single
spaces; punctuation (the Russian commas) is a token of its own.

One idea per module: :mod:`.grammar` (lexicon, trees, :func:`realize`), :mod:`.sampling`
(sentence pairs and the train/test split, :func:`make_translation_data`) and :mod:`.batches`
(:class:`Vocab`, :func:`make_batch`, :func:`batch_iterator`: the pieces every translation model
needs, and the only part that needs torch).
"""

from . import batches, grammar, sampling
from .batches import *  # noqa: F403
from .grammar import *  # noqa: F403
from .sampling import *  # noqa: F403

__all__ = [*grammar.__all__, *sampling.__all__, *batches.__all__]
