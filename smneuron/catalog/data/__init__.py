"""Data files of the catalog: every SageMaker hosting instance type botocore knows, and prices with their source."""
