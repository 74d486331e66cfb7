# TensorFlow's "custom Estimator" tutorial (premade_estimators / custom_estimator, TF 2.x docs) as
# users wrote it for TF <= 2.15: feature columns, tf.keras layers in model_fn, tf.compat.v1 metrics
# and optimizer, train -> evaluate -> predict -> export in one process. Synthetic iris-like data.
import os

import numpy as np
import pandas as pd
import tensorflow as tf

CSV_COLUMN_NAMES = ['SepalLength', 'SepalWidth', 'PetalLength', 'PetalWidth', 'Species']
rng = np.random.RandomState(0)
def make(n):
    y = rng.randint(0, 3, n)
    x = rng.normal(size=(n, 4)) + y[:, None] * 1.5
    df = pd.DataFrame(x, columns=CSV_COLUMN_NAMES[:4]); df['Species'] = y
    return df
train, test = make(600), make(150)
train_y, test_y = train.pop('Species'), test.pop('Species')

def input_fn(features, labels, training=True, batch_size=32):
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    if training:
        dataset = dataset.shuffle(1000).repeat()
    return dataset.batch(batch_size)

my_feature_columns = [tf.feature_column.numeric_column(key=k) for k in train.keys()]

def my_model(features, labels, mode, params):
    net = tf.compat.v1.feature_column.input_layer(features, params['feature_columns'])
    for units in params['hidden_units']:
        net = tf.keras.layers.Dense(units, activation=tf.nn.relu)(net)
    logits = tf.keras.layers.Dense(params['n_classes'], activation=None)(net)
    predicted_classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {'class_ids': predicted_classes[:, tf.newaxis],
                       'probabilities': tf.nn.softmax(logits), 'logits': logits}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=predicted_classes, name='acc_op')
    metrics = {'accuracy': accuracy}
    tf.compat.v1.summary.scalar('accuracy', accuracy[1])
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.compat.v1.train.AdagradOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

classifier = tf.estimator.Estimator(model_fn=my_model, model_dir=os.environ.get('IRIS_MODEL_DIR', 'iris_model'),
    params={'feature_columns': my_feature_columns, 'hidden_units': [30, 10], 'n_classes': 3})
classifier.train(input_fn=lambda: input_fn(train, train_y, training=True), steps=500)
eval_result = classifier.evaluate(input_fn=lambda: input_fn(test, test_y, training=False))
print('\nTest set accuracy: {accuracy:0.3f}\n'.format(**eval_result))
preds = list(classifier.predict(input_fn=lambda: input_fn(test.iloc[:3], test_y.iloc[:3], training=False)))
print("pred", [int(p['class_ids'][0]) for p in preds], list(test_y.iloc[:3]))
def serving_input_fn():
    spec = tf.feature_column.make_parse_example_spec(my_feature_columns)
    return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)()
print("export", classifier.export_saved_model(os.path.join(classifier.model_dir, 'export'), serving_input_fn))
