"""placeholder"""
class RegressionEM: pass
