"""``stoicheia export``: a trained encoder as a Hugging Face model folder.

The folder holds

* ``model.safetensors``: the encoder weights (float32, names ``encoder.<module path>``);
* ``config.json``: ``model_type`` ``stoicheia``, the encoder shape, ``auto_map`` (so
  ``transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)`` and
  ``AutoTokenizer.from_pretrained(...)`` find the code) and, under ``stoicheia``, the run
  configuration, step and held-out figures;
* ``tokenizer_config.json``: the tokenizer class (``auto_map``) and its special tokens;
* the code: ``configuration_stoicheia.py``, ``modeling_stoicheia.py`` and
  ``tokenization_stoicheia.py``, copied as they are from ``stoicheia/inference/hf/``, and the
  package modules they use (``stoicheia_encoder.py``, ``stoicheia_encode.py``, ... :
  :func:`~.carried_code.code_files`), *copies of this package's source files* with their
  ``stoicheia.*`` imports made relative, written at export time: the exported model runs the
  very code that was trained and its tokenizer encodes text exactly as the training data was
  encoded (the round-trip tests compare logits and planes). The folder needs ``torch``,
  ``numpy`` and ``transformers``, never ``stoicheia``;
* ``README.md``: the model card (training data, tiers, steps, held-out figures, licences);
* ``ngram.npz``, when the checkpoint has one beside it (``stoicheia benchmark --save-ngram``):
  the letter n-gram and the fusion weight chosen on the inscription dev set, copied as it is,
  so that ``stoicheia restore EXPORT`` fuses it in as it does for the checkpoint;
* ``fusion.json``, when the checkpoint has one beside it (with or without ``ngram.npz``): the
  n-gram and parallels weights chosen together by ``stoicheia benchmark``, without the
  parallels index's folder (a folder of the machine that ran the benchmark): ``restore`` fuses
  the parallels in when it finds an index where the run's shards would be
  (``data.shard_root``/parallels) or is given ``--parallels``.

``stoicheia evaluate`` and ``stoicheia restore`` (and
:func:`~stoicheia.inference.loading.load_model`) read the folder too.

One module per job: :mod:`.folder` writes the folder (:func:`~.folder.export_model`, whole or
not at all), :mod:`.carried_code` the model and tokenizer code it carries, :mod:`.model_card`
its ``README.md``, from what :mod:`.training_data` finds of the run's training data and
licences. This file imports nothing.
"""
