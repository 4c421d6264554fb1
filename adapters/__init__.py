"""Glue between customobj objectives / metrics and LightGBM / XGBoost."""
