"""${name}: ${desc_md}"""
