print("never run by kiln")
