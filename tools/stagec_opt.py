def main():
    import stagec.dialects
    print("hello", stagec.dialects.__file__)
